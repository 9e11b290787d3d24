"""Host runtime: driver and context, memory, tensors and partitions, launching, DeviceOps."""
