import ArgumentParser
import Foundation
import Wire

/// Waits for one offline to end — cached, failed or deleted, or partially cached for a partial
/// (prepositioned) download — with a bar of its bytes (rate,
/// ETA) and the reasons it waits, for `offline add --wait` and `offline watch`. The connection
/// must be subscribed to `downloads` before the work began.
enum OfflineFollow {
    static let finished: Set<String> = ["cached", "partiallyCached", "failed", "deleted"]

    /// Follows `status` (an `offline.status`) to its end and returns the final status.
    static func follow(_ connection: Connection, status initial: JSONValue, label: String, wait: WaitOptions) async throws -> JSONValue {
        guard let token = initial["token"]?.stringValue, !finished.contains(initial["state"]?.stringValue ?? "") else { return initial }
        var done = initial["bytesOnDisk"]?.doubleValue ?? 0
        var total = initial["sizeBytes"]?.doubleValue
        let follower = DownloadFollower(label: label, disabled: wait.noProgress, originAfter: 15, start: done)
        if initial["state"]?.stringValue == "paused" {
            follower.set(.paused)
        } else if let reason = StallReason.item(error: initial["error"]?.stringValue, reason: initial["reason"]?.stringValue) {
            follower.set(reason)
        }
        func draw() {
            let fraction = total.map { $0 > 0 ? done / $0 : 0 } ?? 0
            follower.bar.update(
                fraction: fraction,
                detail: ProgressText.bytes(
                    done: done, total: total, rate: follower.meter.rate,
                    waiting: follower.reason))
        }
        draw()
        var ended = false
        let outcome = await EventWait.run(connection, timeout: wait.waitTimeout, tick: 1) { input in
            guard case .event(let event) = input else {
                await follower.tick { await probe(connection, token: token) }
                draw()
                return false
            }
            guard event.topic == "downloads", event.data["token"]?.stringValue == token,
                event.data["revalidation"]?.boolValue != true
            else { return false }
            switch event.type {
            case "OfflineProgress":
                done = event.data["bytesOnDisk"]?.doubleValue ?? done
                total = event.data["sizeBytes"]?.doubleValue ?? total
                follower.note(done)
            case "ItemStateChanged":
                switch event.data["state"]?.stringValue {
                case "idle"?: follower.set(StallReason.item(error: event.data["error"]?.stringValue, reason: event.data["reason"]?.stringValue))
                case "paused"?: follower.set(.paused)
                case "queued"?, "downloading"?: if follower.reason?.code != "OriginFailing" { follower.set(nil) }
                case "partiallyCached"?: ended = true
                default: break
                }
            case "OfflineDone", "OfflineFailed", "OfflineDeleted":
                if event.type == "OfflineDone", let total { done = total }
                ended = true
            default:
                return false
            }
            draw()
            return ended
        }
        follower.bar.finish()
        if outcome != .done { throw EventWait.fail(outcome, service: .downloader, what: "the offline of \(label)", json: connection.json) }
        return ended ? try await connection.call("offline.status", ["token": .string(token)]) : initial
    }

    /// Why the offline does not move: its own state and error, then the network.
    static func probe(_ connection: Connection, token: String) async -> DownloadFollower.Probe {
        guard let status = try? await connection.attempt("offline.status", ["token": .string(token)]) else { return .moving }
        if status["state"]?.stringValue == "paused" { return .waiting(.paused) }
        if let reason = StallReason.item(error: status["error"]?.stringValue, reason: status["reason"]?.stringValue) {
            return .waiting(reason)
        }
        if let network = try? await connection.attempt("network.get"),
            let reason = StallReason.network(network, itemAllowsCellular: status["allowCellular"]?.boolValue ?? false)
        {
            return .waiting(reason)
        }
        return ["queued", "discovered"].contains(status["state"]?.stringValue ?? "") ? .queued : .moving
    }

    /// Exit 2, with the reason, when the offline did not end cached (or, for a partial
    /// download, partially cached: all it asked for is on the device).
    static func check(_ status: JSONValue, label: String, json: Bool) throws {
        guard status["state"]?.stringValue != "cached" else { return }
        if status["state"]?.stringValue == "partiallyCached", status["prepositionSeconds"] != nil { return }
        let why = [status["error"], status["reason"]].compactMap { $0?.stringValue }.joined(separator: ": ")
        CtlOutput.error("the offline of \(label) ended \(Format.text(status["state"]))" + (why.isEmpty ? "" : ": \(why)"))
        throw ExitCode(ExitStatus.workFailed)
    }
}
