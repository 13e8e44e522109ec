"""The pages' templates compiled once and kept in this tool's cache: a later process
loads the very code jinja2 compiles; a damaged entry, or a cache that cannot be
written, only costs the compiling."""

from __future__ import annotations

import jinja2
import pytest

from mera_multi_hf.reporting import page_templates

PAGES = ("results_page.html.j2", "media.html.j2", "compare_page.html.j2")


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A new environment (as a new process makes it) on a cache of this test's own."""
    monkeypatch.setenv("MERA_MULTI_CACHE", str(tmp_path / "cache"))

    def make():
        page_templates.environment.cache_clear()
        return page_templates.environment()

    yield make
    page_templates.environment.cache_clear()


def _css(env) -> str:
    """What the media template's macro gives (the page's media styles)."""
    return str(env.get_template("media.html.j2").module.media_css())


def _cached_code(env, name):
    source, filename, _ = env.loader.get_source(env, name)
    return env.bytecode_cache.get_bucket(env, name, filename, source).code, source, filename


def test_a_later_process_loads_the_code_jinja2_compiles(fresh, tmp_path):
    first = fresh()
    for name in PAGES:
        assert _cached_code(first, name)[0] is None  # nothing kept yet
        first.get_template(name)
    entries = sorted((tmp_path / "cache" / page_templates.CACHE_FOLDER).iterdir())
    assert len(entries) == len(PAGES)
    later = fresh()
    for name in PAGES:
        code, source, filename = _cached_code(later, name)
        assert code is not None and code == later.compile(source, name, filename)


@pytest.mark.parametrize("damage", [b"", b"garbage", "truncated"])
def test_a_damaged_entry_is_compiled_again_and_replaced(fresh, tmp_path, damage):
    css = _css(fresh())
    (entry,) = (tmp_path / "cache" / page_templates.CACHE_FOLDER).iterdir()
    whole = entry.read_bytes()
    entry.write_bytes(whole[: len(whole) // 2] if damage == "truncated" else damage)
    assert _css(fresh()) == css
    assert entry.read_bytes() == whole  # written again whole


def test_a_cache_that_cannot_be_written_costs_only_the_compiling(fresh, tmp_path, monkeypatch):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache would be")
    monkeypatch.setenv("MERA_MULTI_CACHE", str(blocked))
    plain = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(page_templates.FOLDER)), **page_templates.OPTIONS
    )
    assert _css(fresh()) == _css(plain) and "img" in _css(plain)
    assert blocked.read_text() == "a file where the cache would be"
