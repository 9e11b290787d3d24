"""The DSL's operations lowered to Tile IR, one module per family (composed in
`lowering/dsl_ops.py`)."""
