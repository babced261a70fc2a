import ArgumentParser
import Foundation
import SquareSimulator

/// `catledger simulator`: a fake Square seller on loopback, for demos and for trying the server.
struct SimulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulator",
        abstract: "Run the Square simulator (Catalog API, signed webhooks, other devices) over HTTP.",
        discussion: """
        Point `catledger sync/edit/serve` at it with --square-base-url http://HOST:PORT and any access token.
        With --webhook-url, catalog changes are delivered as signed catalog.version.updated notifications.

        Examples:
          catledger simulator --port 8081 --webhook-url \\
              http://127.0.0.1:8080/webhooks/square --device-edit-seconds 5
          # Square on a bad day: one catalog write in five meets a 429 (a POS saving at the
          # same moment), and every call is 300 ms slow.
          catledger simulator --fault 429 --fault-rate 0.2 --faults-on-writes-only
          catledger simulator --fault slow:300ms
        Faults: a status (429, 500, 503, ...) with Square's error body, garbage (a 200 that is not
        JSON), slow:DURATION (e.g. slow:2s), silent (no answer, ever), reset (the connection closed
        without an answer).
        """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0: any free port).")
    var port = 8081

    @Option(help: "Seed of everything random.")
    var seed: UInt64 = 1

    @Option(help: "Merchant id of the simulated seller.")
    var merchant = "ML8CAFE0SIM01"

    @Option(help: "Where to POST webhooks (e.g. http://127.0.0.1:8080/webhooks/square).")
    var webhookURL: String?

    @Option(help: "The notification URL signed into webhooks (default: --webhook-url).")
    var notificationURL: String?

    @Option(help: "Webhook signature key.")
    var signatureKey = "simulator-signature-key"

    @Flag(help: "Start with an empty catalog instead of the cafe catalog.")
    var empty = false

    @Option(help: "Seconds between random edits by other devices (0: none).")
    var deviceEditSeconds = 0.0

    @Option(help: "A fault to inject (repeatable): 429, 500, 503, garbage, slow:300ms, silent, reset.")
    var fault: [String] = []

    @Option(help: "The share of requests (0 to 1) that meet one of the --fault faults.")
    var faultRate = 1.0

    @Flag(help: "Inject the faults into catalog writes only (upserts, deletes, image and toggle calls).")
    var faultsOnWritesOnly = false

    func validate() throws {
        for text in fault where SimulatorFault(parsing: text) == nil {
            throw ValidationError("--fault \(text): use a status (429, 500, 503), garbage, slow:300ms, silent or reset")
        }
        guard (0...1).contains(faultRate) else { throw ValidationError("--fault-rate takes a share from 0 to 1, not \(faultRate)") }
    }

    func run() async throws {
        try await reportingErrors(json: global.json) {
            let logger = try global.logger("catledger.simulator")
            let webhook = webhookURL.map {
                WebhookConfiguration(notificationURL: notificationURL ?? $0, signatureKey: signatureKey, burstMax: 3)
            }
            let simulator = SquareSimulator(
                configuration: SimulatorConfiguration(seed: seed, clock: .system, merchantID: merchant, webhook: webhook),
                logger: logger)
            if !empty { await simulator.seedCafeCatalog() }
            if let webhookURL { await simulator.setWebhookSink(HTTPWebhookSink(url: webhookURL)) }
            let interval = deviceEditSeconds
            let host = self.host, port = self.port, merchant = self.merchant
            let faults = SimulatorFaults(seed: seed)
            faults.set(fault.compactMap(SimulatorFault.init(parsing:)), rate: faultRate, writesOnly: faultsOnWritesOnly)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await SimulatorServer.run(simulator: simulator, host: host, port: port, faults: faults,
                                                  logger: logger) { boundPort in
                        print("Square simulator for \(merchant) on http://\(host):\(boundPort). Ctrl-C stops.")
                        fflush(nil)
                    }
                }
                if interval > 0 {
                    group.addTask {
                        while !Task.isCancelled {
                            try await Task.sleep(for: .milliseconds(Int64(interval * 1000)))
                            await simulator.runDeviceScript(count: 1)
                        }
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }
}
