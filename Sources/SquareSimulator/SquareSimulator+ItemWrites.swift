import Foundation
import SquareAPI
import SquareWire

// CreateCatalogImage, UpdateCatalogImage (multipart), UpdateItemTaxes and UpdateItemModifierLists.

extension SquareSimulator {
    /// The routes of this file, or nil when `request` is not one of them.
    func itemWriteRoute(_ request: SquareHTTPRequest) async throws(SimulatedError) -> SquareHTTPResponse? {
        let imagePrefix = "/v2/catalog/images/"
        switch (request.method, request.path) {
        case (.post, "/v2/catalog/images"):
            let form = try Self.multipartForm(request)
            let body = try Self.imageRequest(form)
            let key = try Self.idempotencyKey(body)
            guard let image = body["image"] else {
                throw .invalidRequest(.missingRequiredParameter, "Field `image` is required.", field: "image")
            }
            let objectID = body["object_id"]?.stringValue
            let isPrimary = body["is_primary"]?.boolValue ?? false
            return try await write(request, body: Self.fingerprint(body, form), idempotencyKey: key) { engine, now throws(SimulatedError) in
                let outcome = try engine.createImage(image: image, objectID: objectID, isPrimary: isPrimary,
                                                     nowMilliseconds: now).get()
                return ["image": outcome.objects[0]]
            }
        case (.put, let path) where path.hasPrefix(imagePrefix):
            let id = percentDecodeQueryComponent(String(path.dropFirst(imagePrefix.count)))
            let form = try Self.multipartForm(request)
            let body = try Self.imageRequest(form)
            let key = try Self.idempotencyKey(body)
            guard form.file != nil else {
                throw .invalidRequest(.missingRequiredParameter, "An `image_file` part is required.", field: "image_file")
            }
            return try await write(request, body: Self.fingerprint(body, form), idempotencyKey: key) { engine, now throws(SimulatedError) in
                ["image": try engine.updateImage(id: id, nowMilliseconds: now).get().objects[0]]
            }
        case (.post, "/v2/catalog/update-item-taxes"):
            return try await toggle(.taxes, request, enableKey: "taxes_to_enable", disableKey: "taxes_to_disable")
        case (.post, "/v2/catalog/update-item-modifier-lists"):
            return try await toggle(.modifierLists, request, enableKey: "modifier_lists_to_enable",
                                    disableKey: "modifier_lists_to_disable")
        default:
            return nil
        }
    }

    private func toggle(_ toggle: ItemToggle, _ request: SquareHTTPRequest, enableKey: String,
                        disableKey: String) async throws(SimulatedError) -> SquareHTTPResponse {
        let body = try Self.jsonBody(request)
        func ids(_ key: String) -> [String] { body[key]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        let items = ids("item_ids")
        let enable = ids(enableKey)
        let disable = ids(disableKey)
        guard (1...1000).contains(items.count) else {
            throw .invalidRequest(.invalidValue, "`item_ids` must hold 1 to 1000 ids.", field: "item_ids")
        }
        guard enable.count <= 1000, disable.count <= 1000, !(enable.isEmpty && disable.isEmpty) else {
            throw .invalidRequest(.invalidValue, "Give 1 to 1000 ids in `\(enableKey)` or `\(disableKey)`.", field: enableKey)
        }
        return try await write(request, body: body, idempotencyKey: nil) { engine, now throws(SimulatedError) in
            let outcome = try engine.toggle(toggle, itemIDs: items, enable: enable, disable: disable,
                                            nowMilliseconds: now).get()
            return ["updated_at": .string(RFC3339.format(milliseconds: outcome.catalogVersion))]
        }
    }

    /// The parts of a `multipart/form-data` body: the JSON `request` and the `image_file`.
    struct MultipartForm {
        var request: [UInt8]?
        var file: [UInt8]?
        var fileContentType: String?
    }

    static func multipartForm(_ request: SquareHTTPRequest) throws(SimulatedError) -> MultipartForm {
        let contentType = request.headers["content-type"] ?? ""
        guard contentType.lowercased().hasPrefix("multipart/form-data"),
              let boundaryRange = contentType.range(of: "boundary=")
        else {
            throw .invalidRequest(.badRequest, "Expected a multipart/form-data body with a `request` part.")
        }
        var boundary = String(contentType[boundaryRange.upperBound...])
        if let end = boundary.firstIndex(of: ";") { boundary = String(boundary[..<end]) }
        boundary = boundary.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
        var form = MultipartForm()
        for part in splitMultipart(request.body, boundary: Array("--\(boundary)".utf8)) {
            guard let headerEnd = firstRange(of: Array("\r\n\r\n".utf8), in: part, from: 0) else { continue }
            let headers = String(decoding: part[..<headerEnd.lowerBound], as: UTF8.self).lowercased()
            var content = Array(part[headerEnd.upperBound...])
            if content.suffix(2) == [13, 10] { content.removeLast(2) }
            if headers.contains("name=\"request\"") {
                form.request = content
            } else if headers.contains("name=\"image_file\"") || headers.contains("name=\"file\"") {
                form.file = content
                form.fileContentType = headers.split(separator: "\r\n")
                    .first { $0.hasPrefix("content-type:") }
                    .map { $0.dropFirst("content-type:".count).trimmingCharacters(in: .whitespaces) }
            }
        }
        if let type = form.fileContentType, !["image/jpeg", "image/pjpeg", "image/png", "image/gif"].contains(type) {
            throw .invalidRequest(SquareErrorCode("INVALID_CONTENT_TYPE"), "The image file must be JPEG, PJPEG, PNG or GIF, not \(type).",
                                  field: "image_file")
        }
        return form
    }

    /// The JSON `request` part as an object.
    static func imageRequest(_ form: MultipartForm) throws(SimulatedError) -> JSONValue {
        guard let bytes = form.request else {
            throw .invalidRequest(.missingRequiredParameter, "A `request` part is required.", field: "request")
        }
        return try jsonBody(SquareHTTPRequest(method: .post, path: "", body: bytes))
    }

    /// What idempotent replay compares: the JSON part and the file's bytes.
    static func fingerprint(_ body: JSONValue, _ form: MultipartForm) -> JSONValue {
        ["request": body, "image_file_bytes": .integer(Int64(form.file?.count ?? 0)),
         "image_file_hash": .integer(Int64(truncatingIfNeeded: (form.file ?? []).reduce(UInt64(1469598103934665603)) {
             ($0 ^ UInt64($1)) &* 1099511628211
         }))]
    }

    private static func splitMultipart(_ body: [UInt8], boundary: [UInt8]) -> [ArraySlice<UInt8>] {
        var parts: [ArraySlice<UInt8>] = []
        guard var start = firstRange(of: boundary, in: body, from: 0)?.upperBound else { return [] }
        while let next = firstRange(of: boundary, in: body, from: start) {
            var partStart = start
            if body[partStart...].starts(with: [13, 10]) { partStart += 2 }
            if partStart <= next.lowerBound { parts.append(body[partStart..<next.lowerBound]) }
            start = next.upperBound
            if body[start...].starts(with: Array("--".utf8)) { break }
        }
        return parts
    }

    private static func firstRange<C: RandomAccessCollection>(of needle: [UInt8], in haystack: C, from: Int)
        -> Range<Int>? where C.Element == UInt8, C.Index == Int
    {
        guard !needle.isEmpty, haystack.endIndex - needle.count >= from else { return nil }
        var index = max(from, haystack.startIndex)
        while index + needle.count <= haystack.endIndex {
            if haystack[index] == needle[0], haystack[index..<(index + needle.count)].elementsEqual(needle) {
                return index..<(index + needle.count)
            }
            index += 1
        }
        return nil
    }
}
