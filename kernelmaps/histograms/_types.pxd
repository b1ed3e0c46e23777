"""Fused types shared by the histogram extensions."""

ctypedef fused floating:
    float
    double

# CSR index arrays: int32 or int64.
ctypedef fused index_t:
    int
    long long
