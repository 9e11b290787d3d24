"""Host-side helpers shared by the row-reduction examples (softmax, RMSNorm, LayerNorm)."""
