"""Model converters: NequIP files -> the project's own .fnqm format (docs/model-format.md).

    fusednequip-convert model.pth model.fnqm          # nequip 0.5/0.6 deployed (torch only)
    fusednequip-convert model.nequip.zip model.fnqm   # nequip >= 0.7 package (needs nequip)
    fusednequip-convert last.ckpt model.fnqm          # nequip >= 0.7 checkpoint (needs nequip)
"""
from .cli import convert, main
from .errors import ConversionError

__all__ = ["convert", "main", "ConversionError"]
