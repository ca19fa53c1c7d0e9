"""What the terminal shows: tables that fit its width, formats for other tools, texts, progress."""
