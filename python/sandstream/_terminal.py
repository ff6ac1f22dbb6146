"""A command's pseudo-terminal (spec 1.5, capability ``pty``; ADR-0052).

The master is read as the command's one output stream (``stdout``); a
duplicate of it takes the typed input and the size. This process also keeps
the slave open until the command's session is gone: while any slave is open
the master never reports its end, so the output the session wrote last is
read before the end (EIO) that follows the slave's last close.
"""

from __future__ import annotations

import fcntl
import os
import struct
import termios

from .options import TerminalSize

__all__ = ["Terminal", "EOF", "end_of_file"]

#: The terminal's end-of-file character in its initial modes (``eof`` 0x04).
EOF = 0x04
# Bytes after which a canonical line is empty: CR, NL, and an end-of-file that handed a line over.
_LINE_ENDS = frozenset((0x0D, 0x0A, EOF))


def end_of_file(last_byte: int | None) -> bytes:
    """End-of-file as a terminal in canonical mode takes it (ADR-0052, T3).

    One 0x04 on an empty line; on a line holding typed bytes the first 0x04
    only hands them over, so a second one follows.
    """
    return b"\x04" if last_byte is None or last_byte in _LINE_ENDS else b"\x04\x04"


def set_size(fd: int, size: TerminalSize) -> None:
    """TIOCSWINSZ: the kernel sends SIGWINCH to the foreground group when the size changed."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size.rows, size.cols, 0, 0))


class Terminal:
    """The descriptors of one command's terminal this process holds, and its size last set."""

    def __init__(self, size: TerminalSize) -> None:
        master, slave = os.openpty()  # both close-on-exec: no other child inherits them
        self.master: int | None = master
        self.slave: int | None = slave
        self.input: int | None = None
        self.size = size
        try:
            set_size(slave, size)
            # Input and size through a descriptor of their own: the reader closes
            # the master at its end, which must not close what resize() uses.
            self.input = os.dup(master)
            os.set_blocking(master, False)  # the same open file: the input is non-blocking too
        except BaseException:
            self.close()
            raise

    def take_master(self) -> int:
        """The master, handed to the output reader, which closes it at its end."""
        fd, self.master = self.master, None
        assert fd is not None
        return fd

    def resize(self, size: TerminalSize) -> None:
        """Sets the size now; raises ``OSError`` once the terminal is closed."""
        if self.input is None:
            raise OSError("the terminal is closed")
        set_size(self.input, size)
        self.size = size

    def session_gone(self) -> None:
        """Nothing of the session lives: the slave is closed, and the master drains to its end."""
        fd, self.slave = self.slave, None
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        """Closes every descriptor still held here."""
        for name in ("master", "slave", "input"):
            fd = getattr(self, name)
            setattr(self, name, None)
            if fd is not None:
                os.close(fd)
