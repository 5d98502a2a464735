"""The integration layer's shared piece, under the name the design uses: ``scenemetrics.integrations.registry``.

It is the same module object as :mod:`scenemetrics.registry` (one registry, one state), so a metric registered
through either name is seen by ``scenemetrics eval``, the Lightning callback and the nerfstudio callback alike.

Example:
    >>> import scenemetrics.integrations.registry as reg
    >>> import scenemetrics.registry
    >>> reg is scenemetrics.registry
    True
"""

from __future__ import annotations

import sys

from scenemetrics import registry

sys.modules[f"{__name__}.registry"] = registry
