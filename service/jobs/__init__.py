"""Process-level jobs driven by the CLI: replay of a query log and the demo (plus the
replay's event-time series).
"""
