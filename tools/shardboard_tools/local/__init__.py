"""The local runtime: everything the deployed stack does, on any DynamoDB endpoint, without AWS."""
