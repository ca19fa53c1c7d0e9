"""What people read: rich tables for the terminal and paper-ready plots of results folders."""
