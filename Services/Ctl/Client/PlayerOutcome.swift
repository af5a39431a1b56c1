import ArgumentParser
import Wire

/// What the player did after a load, play or tune, as its events tell it: the controls answer
/// `{"ok":true}` at once and a product that cannot play fails afterwards, with an event named
/// like the error (`FileMissing`, `IllegalPlaybackRequest`, …) just before `IDLE`.
enum PlayerOutcome {
    enum Goal: Equatable {
        /// The product's explicit transition: its source was found.
        case loaded(String)
        /// `PlaybackStateChanged` to `PLAYING`.
        case playing
        /// The transition to an item of the station.
        case tuned(String)

        /// What the goal names, for the hints.
        var params: JSONValue {
            switch self {
            case .loaded(let product): return ["productId": .string(product)]
            case .tuned(let station): return ["stationId": .string(station)]
            case .playing: return [:]
            }
        }
    }

    enum Verdict: Equatable {
        case waiting
        case reached
        case failed(name: String, message: String)
    }

    static func judge(_ event: RPCEvent, goal: Goal) -> Verdict {
        guard event.topic == "player" else { return .waiting }
        if let name = event.data["name"]?.stringValue, name == event.type, let message = event.data["message"]?.stringValue {
            return .failed(name: name, message: message)
        }
        switch event.type {
        case "PlaybackStateChanged":
            switch event.data["playbackState"]?.stringValue {
            case "PLAYING"? where goal == .playing: return .reached
            case "IDLE"?: return .failed(name: "Stopped", message: "the player went idle before it got there (stopped by another client?)")
            default: return .waiting
            }
        case "MediaProductTransition":
            let active = event.data["activeMediaProduct"]
            switch goal {
            case .loaded(let id):
                let requested = event.data["playbackContext"]?["requestedProductId"]?.stringValue
                return active?["productId"]?.stringValue == id || requested == id ? .reached : .waiting
            case .tuned(let station):
                return active?["sourceId"]?.stringValue == station ? .reached : .waiting
            case .playing:
                return .waiting
            }
        default:
            return .waiting
        }
    }

    /// Calls `player.load` or `player.play`. The player answers the error of a product that
    /// failed before any sound in the call itself (as well as with the event): that is the
    /// product failing, exit 2 with the error's hint, as when the event tells it.
    static func start(_ connection: Connection, _ method: String, _ params: JSONValue = [:], goal: Goal) async throws -> JSONValue {
        do {
            return try await connection.attempt(method, params)
        } catch var failure as CtlFailure where failure.exit == ExitStatus.serviceError && failure.code >= 1000 {
            failure.exit = ExitStatus.workFailed
            failure.hint = Hints.forError(failure.name, service: .player, params: goal.params, reason: failure.reason) ?? failure.hint
            throw failure.report(json: connection.json)
        } catch let failure as CtlFailure {
            throw failure.report(json: connection.json)
        }
    }

    /// Reads the connection's `player` events until `goal` or a failure; the connection must be
    /// subscribed before the call that starts it. A failure is printed and thrown as the exit:
    /// 2 when the product failed, 75 when `timeout` passed first, 69 when the player went away.
    static func wait(_ connection: Connection, for goal: Goal, what: String, timeout: Double) async throws {
        var failure: CtlFailure?
        let outcome = await EventWait.run(connection, timeout: timeout) { input in
            guard case .event(let event) = input else { return false }
            switch judge(event, goal: goal) {
            case .waiting:
                return false
            case .reached:
                return true
            case .failed(let name, let message):
                failure = CtlFailure(
                    name: name, message: message, exit: ExitStatus.workFailed, service: .player,
                    hint: Hints.forError(name, service: .player, params: goal.params), text: "player: \(name): \(message)")
                return true
            }
        }
        if let failure { throw failure.report(json: connection.json) }
        switch outcome {
        case .done:
            return
        case .timedOut:
            throw CtlFailure(
                name: "WaitTimeout",
                message: "the player did not get to \(what) within \(Int(timeout)) s (--timeout); it may still: `cassettectl now` shows what it does",
                exit: ExitStatus.waitTimedOut, service: .player
            ).report(json: connection.json)
        case .closed:
            throw CtlFailure(
                name: "ConnectionClosed", message: "the player closed the connection before \(what) (stopped or restarted?)",
                exit: ExitStatus.unavailable, service: .player
            ).report(json: connection.json)
        }
    }
}
