"""One model of Lambda's stream event source mapping, independent of where the records come from."""
