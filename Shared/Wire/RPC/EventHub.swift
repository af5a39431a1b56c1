import NIOConcurrencyHelpers
import NIOCore

/// Fans a service's events out to the connections that subscribed to their topics.
///
/// `seq` grows by one per event per service, whoever listens, so a client that sees a gap
/// knows it missed events (it subscribed late, or to fewer topics). A subscriber that stops
/// reading is not allowed to grow memory: once `backlog` events are written but not yet
/// taken by its socket, it gets one `Overflow` event and is disconnected.
///
/// Every subscriber receives events in `seq` order, however many threads publish at once:
/// an event is numbered and queued under one lock, and one publisher at a time (whichever
/// finds nobody else draining) hands the queue to the connections in that order. Each hand-off
/// goes through the connection's event loop queue, never a direct write, so a drainer that
/// happens to run on that loop cannot overtake one that queued earlier from another thread.
public final class EventHub: Sendable {
    private struct Subscriber {
        let connection: RPCConnection
        var topics: Set<String>
        var pending: Int = 0
        var overflowed = false
    }

    /// An event numbered and addressed, waiting for the drainer.
    private struct Outgoing {
        var event: RPCEvent
        var targets: [RPCConnection]
        var overflowing: [RPCConnection]
    }

    private struct State {
        var seq: UInt64 = 0
        var subscribers: [UInt64: Subscriber] = [:]
        var outgoing: [Outgoing] = []
        var draining = false
    }

    private let state = NIOLockedValueBox(State())
    private let backlog: Int
    /// In-process listeners (`observe`), told of every event however many connections subscribed.
    private let observers = NIOLockedValueBox<[@Sendable (_ topic: String, _ type: String) -> Void]>([])

    /// How long an overflowed subscriber may take to drain before it is disconnected anyway.
    static let overflowGrace = TimeAmount.seconds(2)

    public init(backlog: Int) {
        self.backlog = max(1, backlog)
    }

    /// Number of events published so far (the last `seq` handed out).
    public var lastSeq: UInt64 { state.withLockedValue { $0.seq } }

    public var subscriberCount: Int { state.withLockedValue { $0.subscribers.count } }

    /// Adds topics for a connection; an empty set means every topic.
    public func subscribe(_ connection: RPCConnection, topics: Set<String>) {
        state.withLockedValue { s in
            let wanted = topics.isEmpty ? EventTopic.all : topics
            if var existing = s.subscribers[connection.id] {
                existing.topics.formUnion(wanted)
                s.subscribers[connection.id] = existing
            } else {
                s.subscribers[connection.id] = Subscriber(connection: connection, topics: wanted)
            }
        }
    }

    /// Removes topics (or every topic when empty); the connection stays open.
    public func unsubscribe(_ connection: RPCConnection, topics: Set<String>) {
        state.withLockedValue { s in
            guard var sub = s.subscribers[connection.id] else { return }
            sub.topics = topics.isEmpty ? [] : sub.topics.subtracting(topics)
            s.subscribers[connection.id] = sub.topics.isEmpty ? nil : sub
        }
    }

    public func topics(of connection: RPCConnection) -> Set<String> {
        state.withLockedValue { $0.subscribers[connection.id]?.topics ?? [] }
    }

    func remove(_ connection: RPCConnection) {
        _ = state.withLockedValue { $0.subscribers.removeValue(forKey: connection.id) }
    }

    /// Tells `observer` the topic and type of every event published from now on, on the
    /// publishing thread, after the event is queued for the connections: it must return at once
    /// (ring a doorbell; the player's MPRIS bridge re-reads the state when told of a change).
    public func observe(_ observer: @escaping @Sendable (_ topic: String, _ type: String) -> Void) {
        observers.withLockedValue { $0.append(observer) }
    }

    /// Publishes one event; returns its `seq`.
    @discardableResult
    public func publish(topic: String, type: String, data: JSONValue = .object([:])) -> UInt64 {
        let (seq, drain) = state.withLockedValue { s -> (UInt64, Bool) in
            s.seq += 1
            var targets: [RPCConnection] = []
            var overflowing: [RPCConnection] = []
            for (id, var sub) in s.subscribers where sub.topics.contains(topic) && !sub.overflowed {
                if sub.pending >= backlog {
                    sub.overflowed = true
                    overflowing.append(sub.connection)
                } else {
                    sub.pending += 1
                    targets.append(sub.connection)
                }
                s.subscribers[id] = sub
            }
            if targets.isEmpty && overflowing.isEmpty && !s.draining { return (s.seq, false) }
            s.outgoing.append(
                Outgoing(
                    event: RPCEvent(topic: topic, type: type, seq: s.seq, data: data),
                    targets: targets, overflowing: overflowing))
            if s.draining { return (s.seq, false) }
            s.draining = true
            return (s.seq, true)
        }
        if drain { drainOutgoing() }
        for observer in observers.withLockedValue({ $0 }) { observer(topic, type) }
        return seq
    }

    /// Sends what is queued, in order, until the queue is empty; only one caller at a time.
    private func drainOutgoing() {
        while true {
            let batch = state.withLockedValue { s -> [Outgoing] in
                let batch = s.outgoing
                s.outgoing = []
                if batch.isEmpty { s.draining = false }
                return batch
            }
            if batch.isEmpty { return }
            for item in batch { deliver(item) }
        }
    }

    private func deliver(_ item: Outgoing) {
        if !item.targets.isEmpty {
            // Encoded once for every subscriber: the buffer is shared, not copied.
            let frame = OutboundFrame.buffer(item.event.json, allocator: ByteBufferAllocator())
            for connection in item.targets {
                let channel = connection.channel
                channel.eventLoop.execute { [state] in
                    channel.writeAndFlush(frame).whenComplete { _ in
                        state.withLockedValue { s in
                            if var sub = s.subscribers[connection.id] {
                                sub.pending -= 1
                                s.subscribers[connection.id] = sub
                            }
                        }
                    }
                }
            }
        }
        for connection in item.overflowing {
            let overflow = RPCEvent(
                topic: "service", type: "Overflow", seq: item.event.seq,
                data: [
                    "backlog": .number(Double(backlog)),
                    "message": .string("You stopped reading events; \(backlog) were queued. Reconnect and subscribe again."),
                ]
            ).json
            // Queued behind the backlog, so a client that resumes reading sees every event it
            // was sent and then Overflow; one that never reads is cut off after a grace period.
            let channel = connection.channel
            channel.eventLoop.execute {
                connection.send(overflow).whenComplete { _ in connection.close() }
            }
            channel.eventLoop.scheduleTask(in: Self.overflowGrace) { connection.close() }
            remove(connection)
        }
    }
}
