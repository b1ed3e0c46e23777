"""Efficient match kernels with a learned basis (EMK-CKSVD)."""
