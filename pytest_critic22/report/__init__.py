"""Reporting: the terminal summary and the report formats (JSON, SARIF, GitHub, HTML)."""
