"""HTML pages: the self-contained report of a results folder."""
