"""Bit-accurate NumPy models of fixed-point softmax datapaths for FPGA and ASIC designs.

``softmax(x, **config)`` runs a float array through the modelled hardware and returns the decoded
output words; ``HardwareConfig`` documents every width and variant; ``fastsoftmax hw-report``
measures what each design and width costs in accuracy. NumPy only: importing this package never
needs torch or a GPU.
"""

from .model import (
    DESIGNS,
    DatapathResult,
    HardwareConfig,
    make_config,
    run_datapath,
    softmax,
)

__all__ = ["DESIGNS", "DatapathResult", "HardwareConfig", "make_config", "run_datapath", "softmax"]
