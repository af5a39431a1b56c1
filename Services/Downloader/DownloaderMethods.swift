import Foundation
import OriginClient
import Wire

/// The downloader's methods (docs/protocol.md, "Downloader"). Ids in params are checked
/// against the origin's id rule before they reach a URL or the catalog.
enum DownloaderMethods {
    struct StationParams: Decodable, Sendable {
        var stationId: String
        var targetMinutes: Double?
    }
    struct AddParams: Decodable, Sendable {
        var productId: String
        var productType: String?
        var quality: String?
    }
    struct TokenParams: Decodable, Sendable { var token: String }
    struct ProductParams: Decodable, Sendable { var productId: String }
    struct ListParams: Decodable, Sendable {
        var filter: String?
        var sort: String?
    }
    struct Empty: Decodable, Sendable {}
    struct PolicyParams: Decodable, Sendable { var maxParallel: Int? }

    static func register(on router: inout RPCRouter, core: Task<DownloaderCore, Error>) {
        router.register("stations.list", params: Empty.self) { _, _ in
            try await core.value.stations.list()
        }
        router.register("stations.sync", params: StationParams.self) { p, _ in
            try checkId(p.stationId, field: "stationId")
            if let minutes = p.targetMinutes, !(minutes.isFinite && minutes >= 0) {
                throw RPCError.invalidParams("params.targetMinutes must be a non-negative number or absent.")
            }
            let ready = try await core.value
            do {
                return try await ready.stations.sync(stationId: p.stationId, targetMinutes: p.targetMinutes)
            } catch {
                await ready.stations.recordFailure(stationId: p.stationId, error: error)
                throw error
            }
        }
        router.register("offline.add", params: AddParams.self) { p, _ in
            try checkId(p.productId, field: "productId")
            if let quality = p.quality { try checkId(quality, field: "quality") }
            return try await core.value.products.add(productId: p.productId, productType: p.productType, quality: p.quality)
        }
        router.register("offline.status", params: TokenParams.self) { p, _ in
            try await core.value.products.status(token: p.token)
        }
        router.register("offline.list", params: ListParams.self) { p, _ in
            try await core.value.products.list(state: p.filter, sort: p.sort)
        }
        router.register("offline.state", params: ProductParams.self) { p, _ in
            try checkId(p.productId, field: "productId")
            let ready = try await core.value
            return try await ready.products.offlineState(productId: p.productId, now: ready.trustedNow)
        }
        router.register("offline.pause", params: TokenParams.self) { p, _ in try await core.value.products.pause(token: p.token) }
        router.register("offline.resume", params: TokenParams.self) { p, _ in try await core.value.products.resume(token: p.token) }
        router.register("offline.cancel", params: TokenParams.self) { p, _ in try await core.value.products.cancel(token: p.token) }
        router.register("offline.delete", params: TokenParams.self) { p, _ in try await core.value.products.delete(token: p.token) }
        router.register("offline.deleteAll", params: Empty.self) { _, _ in try await core.value.products.deleteAll() }
        // The one policy key this issue owns; issue 5 brings the rest of policy.get/set.
        router.register("policy.get", params: Empty.self) { _, _ -> JSONValue in
            ["maxParallel": .number(Double(await (try await core.value).engine.maxParallel))]
        }
        router.register("policy.set", params: PolicyParams.self) { p, _ -> JSONValue in
            let engine = try await core.value.engine
            if let n = p.maxParallel {
                guard (1...32).contains(n) else { throw RPCError.invalidParams("params.maxParallel must be 1…32.") }
                await engine.setMaxParallel(n)
            }
            return ["maxParallel": .number(Double(await engine.maxParallel))]
        }
    }

    static func checkId(_ value: String, field: String) throws {
        guard OriginID.isValid(value) else { throw DownloaderError.badParam(field, value) }
    }
}
