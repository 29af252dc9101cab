"""The app's main screen: a frame renders only the part of each widget that changed, at once.

Textual's compositor paints a frame's dirty regions, but first asks every widget that shares the
screen's clip for all of its lines (cached or not, each passed through the styles cache and the
colour filters) and then keeps only the dirty rows. On the main screen every widget shares the
screen's clip, so a typed key (three rows of the editor) rendered the whole transcript, header,
status and footer too: about half of a keypress frame's CPU, and as much again in each streamed
transcript frame. ``CroppedCompositor`` asks each widget only for its lines inside the dirty area.

Textual paints a changed screen on its update timer's next tick, and after each tick that timer
sleeps a whole period (4 ms at our 240 frames a second) before it looks again: a key typed within
that time of the last frame waited for the rest of it. ``MainScreen`` paints a repaint without a
layout as soon as the screen's messages are handled, and a typed character in the editor's key
handler (``paint_now``); a layout still waits for the tick, which gathers the layouts of a start-up
or a resize into one.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual import events
from textual._compositor import Compositor
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget


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

    def paint_now(self, widget: Widget) -> None:
        """Paint ``widget``'s pending repaint in this call (a typed character), instead of after its
        refresh went through its own and the screen's message queues; left to them when it, or the
        screen, needs more than a repaint, or the screen cannot paint now."""
        if (not widget._repaint_required or widget._layout_required or widget._scroll_required
                or self._needs_layout() or not self.is_current or self.app._batch_count):
            return
        widget._repaint_required = False
        self._dirty_widgets.add(widget)
        self._on_timer_update()

    async def _on_idle(self, event: events.Idle) -> None:
        """Widgets to repaint, and no layout: painted now (``Screen._on_idle`` runs next, and finds
        nothing left to schedule)."""
        if self._dirty_widgets and not self._needs_layout():
            self._on_timer_update()

    def _needs_layout(self) -> bool:
        return self._layout_required or self._scroll_required or self._recompose_required
