import Logging
import ServiceLifecycle

/// The merchants' background work as one service of the server's group: it runs the projection
/// follower of every open merchant (started as each opens), closes the merchants idle for the
/// configured interval, and picks up the merchant registry's changes (a merchant added, paused or
/// removed by `catledger merchant` while the server runs) within a tick. On graceful shutdown or
/// cancellation it stops every follower, each after the batch it is committing.
public struct MerchantSupervisor: Service {
    let directory: MerchantDirectory
    let tick: Duration
    let logger: Logger

    public init(directory: MerchantDirectory, tick: Duration = .seconds(1), logger: Logger) {
        self.directory = directory
        self.tick = tick
        self.logger = logger
    }

    public func run() async throws {
        directory.startFollowing()
        await cancelWhenGracefulShutdown { [directory, tick] in
            while !Task.isCancelled {
                await directory.reloadIfRegistryChanged()
                await directory.closeIdle()
                do { try await Task.sleep(for: tick) } catch { return }
            }
        }
        await directory.stopFollowing()
    }
}
