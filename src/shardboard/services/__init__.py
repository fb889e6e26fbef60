"""The use cases: one function each, over the ports they need; the handlers, the CLI and the library call them."""
