import Foundation

/// The view models' values as a template prints them: what ``TextTemplate`` reads.
///
/// `text(named:)` must agree with `MustacheParent.child(named:)`: `nil` exactly when the child is
/// missing, else the child as Mustache prints it (`String(describing:)`). Only strings and integers:
/// a Bool or a sequence would open sections differently.
package protocol TemplateValues {
    func text(named name: String) -> String?
}

/// A one-line Mustache template of plain names and sections, rendered without the library.
///
/// Covers what the digest's templates use: text, `{{name}}`, `{{{name}}}`, `{{&name}}`,
/// `{{#name}}…{{/name}}`, `{{^name}}…{{/name}}` and comments, in text mode (values inserted as they
/// are). A section opens when its name has a value, as Mustache does for strings and numbers (an
/// empty value is no value: the view models give `nil` for it). Anything else (partials, dotted
/// names, lambdas, delimiter changes, several lines, whose standalone-tag rules differ) makes
/// ``init(source:)`` return `nil`, and the library renders that template.
struct TextTemplate: Sendable {
    indirect enum Token: Sendable, Equatable {
        case text(String)
        case value(String)
        case section(String, inverted: Bool, [Token])
    }

    let tokens: [Token]

    init?(source: String) {
        guard !source.contains(where: \.isNewline) else { return nil }
        var stack: [(name: String, inverted: Bool, tokens: [Token])] = [("", false, [])]
        var rest = Substring(source)
        var tags = 0
        var onlyCommentsOrSections = true
        var plainText = ""
        func append(_ token: Token) { stack[stack.count - 1].tokens.append(token) }
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex {
                let text = String(rest[..<open.lowerBound])
                plainText += text
                append(.text(text))
            }
            var after = rest[open.upperBound...]
            let triple = after.first == "{"
            if triple { after = after.dropFirst() }
            guard let close = after.range(of: triple ? "}}}" : "}}") else { return nil }
            var tag = after[..<close.lowerBound]
            rest = after[close.upperBound...]
            tags += 1
            var sigil: Character? = triple ? "&" : nil
            if !triple, let first = tag.first, "!#^/&".contains(first) {
                sigil = first
                tag = tag.dropFirst()
            }
            if sigil == "!" { continue }
            var name = String(tag.trimmingPrefix(while: \.isWhitespace))
            while name.last?.isWhitespace == true { name.removeLast() }
            guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
                return nil
            }
            switch sigil {
            case "#", "^":
                stack.append((name, sigil == "^", []))
            case "/":
                guard stack.count > 1, let section = stack.popLast(), section.name == name else { return nil }
                append(.section(name, inverted: section.inverted, section.tokens))
            default:
                onlyCommentsOrSections = false
                append(.value(name))
            }
        }
        if !rest.isEmpty {
            plainText += rest
            append(.text(String(rest)))
        }
        guard stack.count == 1 else { return nil }
        // A lone section or comment tag on a blank line is "standalone": Mustache drops the line.
        if tags == 1 && onlyCommentsOrSections && plainText.allSatisfy(\.isWhitespace) { return nil }
        tokens = stack[0].tokens
    }

    func render(_ values: some TemplateValues) -> String {
        var out = ""
        Self.render(tokens, values, into: &out)
        return out
    }

    private static func render(_ tokens: [Token], _ values: some TemplateValues, into out: inout String) {
        for token in tokens {
            switch token {
            case .text(let text): out += text
            case .value(let name): if let text = values.text(named: name) { out += text }
            case .section(let name, let inverted, let inner):
                if (values.text(named: name) != nil) != inverted { render(inner, values, into: &out) }
            }
        }
    }
}
