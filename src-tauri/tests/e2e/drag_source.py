"""A window to drag a file from, for the viewer's drag-and-drop test: a GTK 3 button at
the top-left of the X screen that offers the file named on the command line (text/uri-list)
to whatever it is dropped on. Prints "ready" once it is on screen; the test moves the
pointer with xdotool."""

import sys

import gi

gi.require_version("Gdk", "3.0")
gi.require_version("Gtk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402


def main():
    uri = GLib.filename_to_uri(sys.argv[1], None)
    window = Gtk.Window(title="drag source")
    window.set_decorated(False)
    window.move(0, 0)
    window.set_default_size(200, 100)
    button = Gtk.Button(label="drag me")
    button.drag_source_set(
        Gdk.ModifierType.BUTTON1_MASK,
        [Gtk.TargetEntry.new("text/uri-list", 0, 0)],
        Gdk.DragAction.COPY,
    )
    button.connect("drag-data-get", lambda _w, _c, data, _i, _t: data.set_uris([uri]))
    window.add(button)
    window.connect("map-event", lambda *_: print("ready", flush=True))
    window.connect("destroy", Gtk.main_quit)
    window.show_all()
    Gtk.main()


if __name__ == "__main__":
    main()
