import Foundation
import PackagePlugin

/// Compiles docs/openapi.json into the target as `OpenAPIDocument.json`, so the server serves the
/// document kept in the repo (`GET /openapi.json`) without a resource bundle to install beside the binary.
@main
struct EmbedOpenAPIDocument: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let input = context.package.directoryURL.appending(path: "docs/openapi.json")
        let output = context.pluginWorkDirectoryURL.appending(path: "OpenAPIDocument.swift")
        return [.buildCommand(displayName: "Embedding docs/openapi.json", executable: try context.tool(named: "openapi-embed").url,
                              arguments: [input.path, output.path], inputFiles: [input], outputFiles: [output])]
    }
}
