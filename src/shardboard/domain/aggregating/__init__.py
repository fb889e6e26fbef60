"""Aggregating: the stream's counter steps folded per item (batch, window) and applied exactly once to each
board and period's aggregate (aggregation), which joins the sparse index once its views reach T."""
