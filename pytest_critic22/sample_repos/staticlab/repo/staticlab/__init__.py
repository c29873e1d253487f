"""Small utilities whose candidate patch exercises every static check."""
