"""The app's main screen: a frame renders only the part of each widget that changed, at once.

Textual's compositor paints a frame's dirty regions, but first asks every widget that shares the
screen's clip for all of its lines (cached or not, each passed through the styles cache and the
colour filters) and then keeps only the dirty rows. On the main screen every widget shares the
screen's clip, so a typed key (three rows of the editor) rendered the whole transcript, header,
status and footer too: about half of a keypress frame's CPU, and as much again in each streamed
transcript frame. ``CroppedCompositor`` asks each widget only for its lines inside the dirty area,
and not at all for an area the widgets in front of it cover (the screen's own background, under its
children). A layout that only makes a widget shorter (a picker opening in place of the editor takes
rows from the transcript) repaints only the rows it gave up when the widget's lines do not depend on
its height (``KEEPS_LINES_WHEN_SHORTER``: the transcript draws from its scroll offset, which a
shorter view keeps).

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
from textual._compositor import ChopsUpdate, Compositor, ReflowResult
from textual.geometry import Region, Size
from textual.map_geometry import MapGeometry
from textual.reactive import Reactive
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget


class CroppedCompositor(Compositor):
    def __init__(self) -> None:
        super().__init__()
        self._painting: set[Region] = set()  # the dirty regions of the partial update under way

    def render_partial_update(self) -> ChopsUpdate | None:
        self._painting = set(self._dirty_regions)
        try:
            return super().render_partial_update()
        finally:
            self._painting = set()

    def _get_renders(self, crop: Region | None = None) -> Iterable[tuple[Region, Region, list[Strip]]]:
        """Each visible widget's lines inside ``crop`` (all of the screen when None), front to back.

        The base class yields ``(region, clip, lines)`` with the lines of ``region & clip``; here
        region and clip are both that area cropped, which is what its one caller paints from.
        """
        drawn: list[Region] = []
        for widget, (region, clip) in self.visible_widgets.items():
            area = region.intersection(clip)
            if crop is not None:
                area = _to_paint(area.intersection(crop), self._painting, drawn)
            if area.area:
                drawn.append(area)
                lines = widget.render_lines(Region(area.x - region.x, area.y - region.y, area.width, area.height))
                yield area, area, lines

    def reflow(self, parent: Widget, size: Size) -> ReflowResult:
        """Textual's layout, which marks the old and new areas of every widget that moved or changed size
        dirty; a widget that only got shorter and keeps its lines marks only the rows it gave up."""
        before, pending = self._full_map, set(self._dirty_regions)
        result = super().reflow(parent, size)
        after = self._full_map
        scrollbars = {shown.parent for shown in result.shown | result.hidden}  # appeared or went
        kept = {widget for widget in result.resized if getattr(widget, "KEEPS_LINES_WHEN_SHORTER", False)
                and widget not in scrollbars and _only_shorter(before[widget], after[widget])}
        if kept and size.region not in self._dirty_regions:
            changed = after.items() ^ before.items()
            regions = {geometry.clip.intersection(geometry.region) for widget, geometry in changed if widget not in kept}
            regions.update(_given_up(before[widget], after[widget]) for widget in kept)
            self._dirty_regions = pending | {region for region in regions if region}
        return result


def _to_paint(area: Region, dirty: set[Region], drawn: list[Region]) -> Region:
    """The rows and columns of ``area`` to render: around the parts of it that are dirty (all of it
    when no partial update is under way) and that the regions ``drawn`` in front do not cover."""
    parts = [part for region in dirty if (part := area.intersection(region)).area] if dirty else [area]
    parts = [part for part in parts if part.area and not _covered(part, drawn)]
    return Region.from_union(parts) if parts else Region()


def _covered(area: Region, drawn: list[Region]) -> bool:
    """Whether the regions in ``drawn`` (in front) cover all of ``area``."""
    over = sorted((region for region in drawn if region.overlaps(area)), key=lambda region: region.x)
    if not over:
        return False
    for y in range(area.y, area.bottom):
        x = area.x
        for region in (r for r in over if r.y <= y < r.bottom):
            if region.x > x:
                return False
            x = max(x, region.right)
        if x < area.right:
            return False
    return True


def _only_shorter(before: MapGeometry, after: MapGeometry) -> bool:
    """Same place, width, clip and content width; fewer rows."""
    old, new = before.region, after.region
    return (old.x == new.x and old.y == new.y and old.width == new.width and new.height < old.height
            and before.clip == after.clip and before.container_size.width == after.container_size.width)


def _given_up(before: MapGeometry, after: MapGeometry) -> Region:
    old, new = before.region, after.region
    return Region(old.x, new.bottom, old.width, old.bottom - new.bottom).intersection(before.clip)


class MainScreen(Screen[None]):
    # Textual repaints the whole screen when the focus moves (a picker opening or closing); the widgets
    # that gain and lose it repaint themselves
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    # a terminal too short for the editor (or a picker), the header and the footer: the top rows are
    # the ones left out, as in a terminal's scrollback, not the rows being typed in; no scrollbar
    DEFAULT_CSS = "MainScreen { overflow-y: hidden; }"

    def __init__(self) -> None:
        super().__init__(id="_default")  # the id Textual gives its default screen
        self._compositor = CroppedCompositor()
        self.anchor()

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
