import Synchronization

/// The app's offline mode as the downloader's origin clients read it before every request (the
/// player sets `offlineMode` in the policy): while on, nothing is sent to the origin and a call
/// that needs it answers `OfflineMode`. `PolicyGate` sets it from the policy it holds, at start
/// (once the persisted policy is loaded) and on every change.
final class OfflineSwitch: Sendable {
    private let on = Atomic<Bool>(false)

    var isOn: Bool { on.load(ordering: .relaxed) }

    func set(_ value: Bool) { on.store(value, ordering: .relaxed) }
}
