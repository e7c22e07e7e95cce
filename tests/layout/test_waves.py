from __future__ import annotations

import pytest

from bot.config import Config, ExtraUnit
from bot.errors import WaveBotError
from bot.layout.catalog import Service, parse_service
from bot.layout.waves import compute_waves

from conftest import service


def svc(name: str, *deps: str) -> Service:
    return parse_service(service(name, *deps).encode(), f"catalog/{name}.yaml")


def test_wave_is_the_longest_dependency_path_not_the_shortest() -> None:
    # seerr -> sonarr -> qbittorrent and seerr -> plex: the long path decides.
    graph = compute_waves([svc("seerr", "sonarr", "plex"), svc("sonarr", "qbittorrent"), svc("qbittorrent"),
                           svc("plex")], Config())
    assert graph.waves() == {"plex": 0, "qbittorrent": 0, "seerr": 2, "sonarr": 1}
    assert graph.max_wave == 2


def test_db_leaf_lands_strictly_below_its_consumer_with_no_special_case() -> None:
    graph = compute_waves([svc("nextcloud", "nextcloud-db")], Config())
    assert graph.nodes["nextcloud-db"].origin == "leaf"
    assert graph.waves() == {"nextcloud": 1, "nextcloud-db": 0}


def test_leaf_patterns_come_from_config() -> None:
    config = Config(leaf_patterns=("*-db", "redis-*"))
    assert compute_waves([svc("app", "redis-cache")], config).waves()["redis-cache"] == 0
    with pytest.raises(WaveBotError, match="'app' depends on 'redis-cache', which has no ServiceDefinition"):
        compute_waves([svc("app", "redis-cache")], Config())


def test_extra_unit_above_its_anchor_and_beside_it() -> None:
    config = Config(extra_units=(ExtraUnit("gitea-actions", "gitea", above=True),
                                 ExtraUnit("gitea-backup", "gitea"),
                                 ExtraUnit("runner-cache", "gitea-actions", above=True)))
    waves = compute_waves([svc("gitea")], config).waves()
    assert waves == {"gitea": 0, "gitea-actions": 1, "gitea-backup": 0, "runner-cache": 2}


def test_extra_unit_named_like_a_service_is_an_error() -> None:
    config = Config(extra_units=(ExtraUnit("gitea", "plex"),))
    with pytest.raises(WaveBotError, match="extra unit 'gitea' has the name of another node"):
        compute_waves([svc("gitea"), svc("plex")], config)


def test_extra_units_anchored_in_a_cycle() -> None:
    config = Config(extra_units=(ExtraUnit("a", "b"), ExtraUnit("b", "a")))
    with pytest.raises(WaveBotError, match="anchored to each other in a cycle: a, b"):
        compute_waves([svc("gitea")], config)


def test_cycle_is_reported_as_a_full_path_from_the_smallest_name() -> None:
    with pytest.raises(WaveBotError) as exc:
        compute_waves([svc("c", "a"), svc("a", "b"), svc("b", "c"), svc("z", "a")], Config())
    assert exc.value.message == ("dependency cycle: a -> b -> c -> a; its dependencies: a -> b (catalog/a.yaml:7), "
                                 "b -> c (catalog/b.yaml:7), c -> a (catalog/c.yaml:7)")
    assert exc.value.path == "catalog/a.yaml" and exc.value.line == 7  # a's dependency on b


def test_two_node_cycle() -> None:
    with pytest.raises(WaveBotError, match="dependency cycle: api -> web -> api"):
        compute_waves([svc("web", "api"), svc("api", "web")], Config())
