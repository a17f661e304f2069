"""The reference implementations as oracles: each runs in its own long-lived process."""
