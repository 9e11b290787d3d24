"""From verified IR to a cubin: `bytecode` (the Tile IR bytecode writer), `tileiras`
(finding and running the assembler and disassembler) and `cache` (memory and disk cubin
cache). Submodules are imported on use; nothing here needs a GPU."""
