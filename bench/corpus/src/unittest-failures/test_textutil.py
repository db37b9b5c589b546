import unittest

from textutil import initials, parse_kv, read_config, slugify, wrap


class SlugifyTest(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_punctuation(self):
        self.assertEqual(slugify("Release notes: v2.0!"), "release-notes-v2-0")

    def test_empty(self):
        self.assertEqual(slugify(""), "")


class WrapTest(unittest.TestCase):
    def test_short_line(self):
        self.assertEqual(wrap("a b c", 10), ["a b c"])

    def test_wraps_at_width(self):
        text = "the quick brown fox jumps over the lazy dog"
        self.assertEqual(wrap(text, 15), ["the quick brown", "fox jumps over", "the lazy", "dog"])

    def test_long_word(self):
        self.assertEqual(wrap("supercalifragilistic", 5), ["supercalifragilistic"])


class ConfigTest(unittest.TestCase):
    def test_parse_kv(self):
        self.assertEqual(parse_kv(" name = demo "), ("name", "demo"))

    def test_read_config_skips_comments(self):
        cfg = read_config(["# comment", "a=1", "b = 2"])
        self.assertEqual(cfg, {"a": "1", "b": "2"})

    def test_read_config_blank_lines(self):
        cfg = read_config(["a=1", "", "b=2"])
        self.assertEqual(cfg, {"a": "1", "b": "2"})


class InitialsTest(unittest.TestCase):
    def test_two_names(self):
        self.assertEqual(initials("ada lovelace"), "AL")


if __name__ == "__main__":
    unittest.main()
