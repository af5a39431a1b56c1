#!/usr/bin/env python3
"""Lists the stations, takes one offline, plays it for a while and hands the play to the
reporter — the whole device flow in a page, with cassette_client.py.

    python3 examples/play_station.py --runtime-dir /tmp/c/run --station st-9 --seconds 5

Exit status 0 when every step worked, 1 (with the reason) otherwise.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cassette_client import CassetteError, Client  # noqa: E402


def show(event):
    data = json.dumps(event.get("data", {}), sort_keys=True, separators=(",", ":"))
    print("  event %-9s %-24s %s" % (event["topic"], event["type"], data), flush=True)


def list_stations(downloader):
    """The offline stations the origin offers and those the device holds (ids)."""
    answer = downloader.call("stations.list")
    print("origin %s; offline stations:" % ("reachable" if answer["available"] else "NOT reachable"))
    for station in answer["remoteOffline"]:
        print("  %-8s %-12s %2d tracks %6.1f s" % (station["id"], station["name"], station["itemCount"],
                                                   station["durationSeconds"]))
    held = [station["id"] for station in answer["localOffline"]]
    if held:
        print("on the device: %s" % ", ".join(held))
    return [station["id"] for station in answer["remoteOffline"]], held


def sync(downloader, station_id, timeout, held):
    downloader.subscribe(["downloads"])  # before the sync, so no event is missed
    try:
        result = downloader.call("stations.sync", stationId=station_id)
    except CassetteError as error:
        # NoOrigin (1000): the downloader has no origin configured; OriginUnreachable (1010): the
        # origin did not answer within the call's 8 s. A station already on the device still plays.
        if error.name in ("NoOrigin", "OriginUnreachable") and station_id in held:
            print("cannot sync %s (%s); playing what the device holds" % (station_id, error.name))
            return
        raise
    print("sync %s: %d items, %d to download" % (station_id, result["total"], result["pending"]))
    pending, failed = result["pending"], result["failed"]
    deadline = time.monotonic() + timeout
    while pending > 0:
        event = downloader.next_event(timeout=max(0.1, deadline - time.monotonic()))
        if event is None:
            raise SystemExit("sync of %s did not finish within %d s" % (station_id, timeout))
        if event["data"].get("stationId") != station_id:
            continue
        if event["type"] in ("StationDownloadProgress", "StationDownloadComplete"):
            pending, failed = event["data"]["pending"], event["data"]["failed"]
            show(event)
    if failed:
        raise SystemExit("%d items of %s failed to download" % (failed, station_id))
    print("synced %s: %d/%d items on the device" % (station_id, result["total"] - failed, result["total"]))


def play(player, station_id, seconds):
    player.subscribe(["player"])
    try:
        player.call("station.tune", stationId=station_id)
    except CassetteError as error:
        # StationNotPlayable (2005): not on the device, and no origin is configured, or the origin
        # says it is not synced yet, streaming only or unknown. OriginUnreachable (1010): not on
        # the device, and the origin did not answer within the call's 8 s.
        if error.name in ("StationNotPlayable", "OriginUnreachable"):
            raise SystemExit("cannot play %s: %s" % (station_id, error))
        raise
    print("playing %s for %.0f s" % (station_id, seconds))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        event = player.next_event(timeout=max(0.05, deadline - time.monotonic()))
        if event is not None:
            show(event)
    status = player.call("player.status")
    print("player: %s %s at %.1f s" % (status["playbackState"], (status.get("mediaProduct") or {}).get("productId"),
                                      status.get("assetPosition") or 0))
    player.call("player.reset")  # closes the play event; the player hands it to the reporter
    for event in player.events(timeout=0.5):
        show(event)
    return status


def report(reporter, timeout):
    deadline = time.monotonic() + timeout
    while True:
        status = reporter.call("playlog.status")
        plays = status["plays"]
        if plays["pending"] + plays["delivered"] > 0:
            break
        if time.monotonic() > deadline:
            raise SystemExit("the reporter received no play event within %d s" % timeout)
        time.sleep(0.2)
    try:
        status = reporter.call("playlog.flush")
    except CassetteError as error:
        # OriginNotConfigured (3003): the reporter keeps every play until it runs with an origin.
        if error.name != "OriginNotConfigured":
            raise
        print("reporter: no origin configured, the plays stay queued")
    print("play log: %d pending, %d delivered" % (status["plays"]["pending"], status["plays"]["delivered"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime-dir", help="directory of the sockets (default $CASSETTE_RUNTIME_DIR or /run/cassette)")
    parser.add_argument("--station", help="station id (default: the first offline station)")
    parser.add_argument("--seconds", type=float, default=5, help="how long to play (default 5)")
    parser.add_argument("--sync-timeout", type=float, default=120)
    args = parser.parse_args()
    try:
        with Client.connect("downloader", args.runtime_dir) as downloader:
            offered, held = list_stations(downloader)
            station_id = args.station or (offered or held or [None])[0]
            if station_id is None:
                raise SystemExit("no offline station to play")
            sync(downloader, station_id, args.sync_timeout, held)
        with Client.connect("player", args.runtime_dir) as player:
            status = play(player, station_id, args.seconds)
            if status["playbackState"] not in ("PLAYING", "STALLED", "NOT_PLAYING"):
                raise SystemExit("the player did not play %s: %s" % (station_id, status["playbackState"]))
        with Client.connect("reporter", args.runtime_dir) as reporter:
            report(reporter, 15)
    except CassetteError as error:
        raise SystemExit("service error: %s" % error)
    except OSError as error:
        raise SystemExit("cannot talk to a service: %s" % error)
    print("done")


if __name__ == "__main__":
    main()
