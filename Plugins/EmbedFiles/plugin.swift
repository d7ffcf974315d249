import Foundation
import PackagePlugin

/// Builds a target's `Assets/` folder (the pages' scripts, style sheets and
/// icons, kept as real `.js`/`.css`/`.svg` files) into the target as
/// `EmbeddedFiles`, one string constant a file: the services serve them from
/// the binary, with nothing beside it at run time.
@main
struct EmbedFiles: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let folder = target.directoryURL.appendingPathComponent("Assets")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let inputs = names.filter { !$0.hasPrefix(".") }.sorted().map { folder.appendingPathComponent($0) }
        guard !inputs.isEmpty else { return [] }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedFiles.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(inputs.count) files of \(target.name)/Assets",
                executable: try context.tool(named: "embed-files").url,
                arguments: [output.path] + inputs.map(\.path),
                inputFiles: inputs,
                outputFiles: [output])
        ]
    }
}
