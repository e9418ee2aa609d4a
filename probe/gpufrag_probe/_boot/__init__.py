"""The directory `python -m gpufrag_probe run` puts first on PYTHONPATH:
its sitecustomize.py starts the probe in every Python process."""
