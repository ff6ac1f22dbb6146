"""The ``user`` option takes the spec's type only: a non-empty string (section 3; a uid is spelled "1000")."""

from __future__ import annotations

import unittest

from sandstream import InvalidArgument, create_local_sandbox


class UserOptionTest(unittest.IsolatedAsyncioTestCase):
    async def test_a_number_is_refused_naming_the_option(self) -> None:
        async with create_local_sandbox() as sb:
            for value in (0, 1000, 1.5, True):
                with self.subTest(user=value), self.assertRaises(InvalidArgument) as caught:
                    await sb.run(["true"], user=value)  # type: ignore[arg-type]
                self.assertEqual(caught.exception.key, "options.user")
                with self.assertRaises(InvalidArgument) as caught:
                    sb.stream(["true"], user=value)  # type: ignore[arg-type]
                self.assertEqual(caught.exception.key, "options.user")


if __name__ == "__main__":
    unittest.main()
