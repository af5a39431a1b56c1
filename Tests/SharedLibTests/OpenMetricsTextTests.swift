import Wire
import XCTest

@testable import ServiceKit

/// The OpenMetrics formatter, the metrics keys and the `/proc/self/io` reading, without sockets
/// (`MetricsTests` parses the daemons' text with a real parser).
final class OpenMetricsTextTests: XCTestCase {
    func testCountersGetTotalSamplesAndTheTextEndsWithEOF() {
        let text = OpenMetricsText.render([
            .counter("cassette_download_bytes", help: "Bytes.", unit: "bytes", 1_048_576),
            .gauge("cassette_seconds_until_silence", help: "Until \"silence\"\nreally.", .infinity),
            .state("cassette_playback_state", help: "State.", states: ["IDLE", "PLAYING"], current: "PLAYING"),
            MetricFamily("cassette_labels", .gauge, help: "Odd labels.", samples: [.init(0.25, labels: [("path", "a\\b\"c\nd")])]),
        ])
        XCTAssertEqual(
            text,
            """
            # TYPE cassette_download_bytes counter
            # UNIT cassette_download_bytes bytes
            # HELP cassette_download_bytes Bytes.
            cassette_download_bytes_total 1048576
            # TYPE cassette_seconds_until_silence gauge
            # HELP cassette_seconds_until_silence Until \\"silence\\"\\nreally.
            cassette_seconds_until_silence +Inf
            # TYPE cassette_playback_state gauge
            # HELP cassette_playback_state State.
            cassette_playback_state{state="IDLE"} 0
            cassette_playback_state{state="PLAYING"} 1
            # TYPE cassette_labels gauge
            # HELP cassette_labels Odd labels.
            cassette_labels{path="a\\\\b\\"c\\nd"} 0.25
            # EOF

            """)
    }

    func testNumbers() {
        XCTAssertEqual(OpenMetricsText.number(0), "0")
        XCTAssertEqual(OpenMetricsText.number(-3), "-3")
        XCTAssertEqual(OpenMetricsText.number(1.5), "1.5")
        XCTAssertEqual(OpenMetricsText.number(-.infinity), "-Inf")
        XCTAssertEqual(OpenMetricsText.number(.nan), "NaN")
        XCTAssertEqual(OpenMetricsText.number(1e20), "1e+20")
    }

    func testProcIOFields() {
        let text = "rchar: 10\nwchar: 20\nwrite_bytes: 8192\ncancelled_write_bytes: 4096\n"
        let fields = ProcessIO.parse(ArraySlice(Array(text.utf8)))
        XCTAssertEqual(fields["write_bytes"], 8192)
        XCTAssertEqual(fields["cancelled_write_bytes"], 4096)
        XCTAssertGreaterThanOrEqual(ProcessIO.bytesWritten(), 0)
    }

    func testMetricsKeys() throws {
        XCTAssertEqual(try MetricsSettings(section: nil, service: "player"), MetricsSettings())
        let set = try MetricsSettings(section: ["metricsFile": "/run/m/p.prom", "metricsIntervalSeconds": 15], service: "player")
        XCTAssertEqual(set.file, "/run/m/p.prom")
        XCTAssertEqual(set.intervalSeconds, 15)
        for bad: [String: JSONValue] in [
            ["metricsFile": "relative.prom"], ["metricsFile": 3], ["metricsFile": "/dir/"],
            ["metricsIntervalSeconds": 0], ["metricsIntervalSeconds": "60"],
        ] {
            XCTAssertThrowsError(try MetricsSettings(section: bad, service: "reporter"), "\(bad)") { error in
                XCTAssertEqual((error as? DaemonError)?.code, .configInvalid)
            }
        }
    }
}
