"""Random Fourier features of points and of sets (RFF, RDF, DRDF)."""
