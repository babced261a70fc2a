// Other devices write through the same per-seller lock as API clients, so an API write that
// arrives while the point of sale or the dashboard is saving gets Square's 429.

extension SquareSimulator {
    /// True while a write (an API write or a device's save) holds the seller's write lock.
    public var writeLockHeld: Bool { writeInFlight }

    /// Applies a device edit while holding the seller's write lock for `duration` (waiting for an
    /// API write in flight first): API writes arriving meanwhile get 429 `RATE_LIMITED` with
    /// `Retry-After`.
    @discardableResult
    public func applyDeviceEdit(_ edit: DeviceEdit, by device: SimulatedDevice,
                                holdingWriteLockFor duration: Duration) async -> DeviceEditRecord {
        while writeInFlight { try? await Task.sleep(for: .milliseconds(2)) }
        writeInFlight = true
        defer { writeInFlight = false }
        try? await Task.sleep(for: duration)
        return applyDeviceEdit(edit, by: device)
    }
}
