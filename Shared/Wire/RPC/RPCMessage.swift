/// A request or notification after the envelope was checked.
public struct RPCRequest: Sendable {
    /// nil for a notification, which gets no response.
    public var id: RPCID?
    public var method: String
    /// Always an object; an absent `params` reads as `{}`.
    public var params: JSONValue

    public init(id: RPCID?, method: String, params: JSONValue = [:]) {
        self.id = id
        self.method = method
        self.params = params
    }

    public var json: JSONValue {
        var o: [String: JSONValue] = ["jsonrpc": "2.0", "method": .string(method), "params": params]
        if let id { o["id"] = id.json }
        return .object(o)
    }

    /// Checks a decoded frame against the JSON-RPC 2.0 envelope. The error carries the
    /// request's id when one could be read, so the client can match it.
    public static func parse(_ value: JSONValue) -> Result<RPCRequest, RejectedRequest> {
        guard case .object(let o) = value else {
            return .failure(RejectedRequest(id: nil, error: .invalidRequest("A frame must hold one JSON object.")))
        }
        return parse(JSONReader.Envelope(jsonrpc: o["jsonrpc"], id: o["id"], method: o["method"], params: o["params"]))
    }

    /// `parse`'s checks on the envelope's members alone, as a server reads them from a frame.
    static func parse(_ o: JSONReader.Envelope) -> Result<RPCRequest, RejectedRequest> {
        var id: RPCID? = nil
        if let rawID = o.id {
            guard let parsed = RPCID(rawID) else {
                return .failure(RejectedRequest(id: nil, error: .invalidRequest("'id' must be a number or a string.")))
            }
            id = parsed
        }
        guard o.jsonrpc == "2.0" else {
            return .failure(RejectedRequest(id: id, error: .invalidRequest("'jsonrpc' must be \"2.0\".")))
        }
        guard let method = o.method?.stringValue, !method.isEmpty else {
            return .failure(RejectedRequest(id: id, error: .invalidRequest("'method' must be a non-empty string.")))
        }
        let params = o.params ?? .object([:])
        guard case .object = params else {
            return .failure(RejectedRequest(id: id, error: .invalidParams("'params' must be an object when present.")))
        }
        return .success(RPCRequest(id: id, method: method, params: params))
    }
}

/// A frame that is a JSON object but not a valid request; answered, the connection stays.
public struct RejectedRequest: Error, Sendable {
    public var id: RPCID?
    public var error: RPCError
}

/// A response to one request.
public struct RPCResponse: Sendable {
    public var id: RPCID?
    public var outcome: Result<JSONValue, RPCError>

    public init(id: RPCID?, outcome: Result<JSONValue, RPCError>) {
        self.id = id
        self.outcome = outcome
    }

    public var json: JSONValue {
        var o: [String: JSONValue] = ["jsonrpc": "2.0", "id": id?.json ?? .null]
        switch outcome {
        case .success(let result): o["result"] = result
        case .failure(let error): o["error"] = error.json
        }
        return .object(o)
    }

    /// `json`'s bytes (`JSONCoding.data(json)`), written without building the envelope as a
    /// dictionary first: every answer goes through here.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return out
    }

    /// Appends `bytes` to `out`: a server reuses one array's memory for every answer.
    public func write(into out: inout [UInt8]) {
        // Keys in sorted order, as JSONWriter writes an object: error < id < jsonrpc < result.
        out.append(contentsOf: "{".utf8)
        if case .failure(let error) = outcome {
            out.append(contentsOf: "\"error\":".utf8)
            error.write(into: &out)
            out.append(contentsOf: ",".utf8)
        }
        out.append(contentsOf: "\"id\":".utf8)
        JSONWriter.write(id?.json ?? .null, into: &out)
        out.append(contentsOf: ",\"jsonrpc\":\"2.0\"".utf8)
        if case .success(let result) = outcome {
            out.append(contentsOf: ",\"result\":".utf8)
            JSONWriter.write(result, into: &out)
        }
        out.append(contentsOf: "}".utf8)
    }
}

/// A notification pushed to subscribers: `{"method":"event","params":{topic,type,seq,data}}`.
public struct RPCEvent: Sendable, Equatable {
    public var topic: String
    public var type: String
    public var seq: UInt64
    public var data: JSONValue

    public init(topic: String, type: String, seq: UInt64, data: JSONValue) {
        self.topic = topic
        self.type = type
        self.seq = seq
        self.data = data
    }

    public var json: JSONValue {
        [
            "jsonrpc": "2.0", "method": "event",
            "params": ["topic": .string(topic), "type": .string(type), "seq": .number(Double(seq)), "data": data],
        ]
    }

    public init?(json: JSONValue) {
        guard json["method"] == "event", let p = json["params"], let topic = p["topic"]?.stringValue,
            let type = p["type"]?.stringValue, let seq = p["seq"]?.doubleValue
        else { return nil }
        self.init(topic: topic, type: type, seq: UInt64(seq), data: p["data"] ?? .null)
    }
}

/// The event topics of docs/protocol.md ("Events").
public enum EventTopic {
    public static let all: Set<String> = ["downloads", "player", "metrics", "reporter", "network", "catalog", "service"]
}
