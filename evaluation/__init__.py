"""humeval statistics engine: plain NumPy/SciPy functions, no Django (see README.md)."""
