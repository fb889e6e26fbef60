"""DynamoDB adapters: one module per table, one for the key scheme, one for stream records.

The domain never sees a wire-format item or a botocore error: these modules turn both into domain values and
outcomes (``Throttled``, a refused compare-and-set) at the boundary.
"""
