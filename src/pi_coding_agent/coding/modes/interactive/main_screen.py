"""The app's main screen: a frame renders only the part of each widget that changed.

Textual's compositor paints a frame's dirty regions, but first asks every widget that shares the
screen's clip for all of its lines (cached or not, each passed through the styles cache and the
colour filters) and then keeps only the dirty rows. On the main screen every widget shares the
screen's clip, so a typed key (three rows of the editor) rendered the whole transcript, header,
status and footer too: about half of a keypress frame's CPU, and as much again in each streamed
transcript frame. ``CroppedCompositor`` asks each widget only for its lines inside the dirty area.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual._compositor import Compositor
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip


class CroppedCompositor(Compositor):
    def _get_renders(self, crop: Region | None = None) -> Iterable[tuple[Region, Region, list[Strip]]]:
        """Each visible widget's lines inside ``crop`` (all of the screen when None), front to back.

        The base class yields ``(region, clip, lines)`` with the lines of ``region & clip``; here
        region and clip are both that area cropped, which is what its one caller paints from.
        """
        for widget, (region, clip) in self.visible_widgets.items():
            area = region.intersection(clip)
            if crop is not None:
                area = area.intersection(crop)
            if area.area:
                lines = widget.render_lines(Region(area.x - region.x, area.y - region.y, area.width, area.height))
                yield area, area, lines


class MainScreen(Screen[None]):
    def __init__(self) -> None:
        super().__init__(id="_default")  # the id Textual gives its default screen
        self._compositor = CroppedCompositor()
