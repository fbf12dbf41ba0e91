import CPangoCairo
import Foundation

/// Android's notification shade (Material, Android 12+ light theme), in dp.
extension PreviewRenderer {
    enum Android {
        static let families = "Roboto, Noto Sans, Noto Naskh Arabic, Noto Sans Hebrew, Noto Sans CJK SC"
        static let canvasWidth = 376.0
        static let card = (x: 8.0, width: 360.0, radius: 16.0, padding: 16.0)
        static let accent = Color(hex: 0x1A73E8)
        static let header = TextStyle(families: families, size: 12, lineHeight: 18, color: Color(hex: 0x5F6368))
        static let title = TextStyle(families: families, weight: .medium, size: 14, lineHeight: 20, color: Color(hex: 0x202124))
        static let body = TextStyle(families: families, size: 14, lineHeight: 20, color: Color(hex: 0x5F6368))
        static let action = TextStyle(families: families, weight: .medium, size: 14, lineHeight: 20, color: accent)
        static let largeIcon = 40.0
        /// The big picture's box: the content width at 2:1, centre-cropped by the system.
        static let pictureAspect = 2.0
    }

    func androidScene(_ content: NotificationContent, state: PreviewState, limits: TextLimits) -> Scene {
        var notes: [String] = []
        let card = Android.card
        // Large icon on the right: the icon rendition, or (collapsed BigPicture) the picture itself.
        let collapsedPicture = content.style == .bigPicture && state == .collapsed ? content.imageURL : nil
        let (left, contentWidth, expanded, icon, textWidth) = openCard(
            card, state: state, iconURL: content.iconURL ?? collapsedPicture, iconSize: Android.largeIcon, notes: &notes)
        let showsPicture = content.style == .bigPicture && expanded && content.imageURL != nil

        let header = block("\(configuration.appName) · now", Android.header, width: contentWidth - 60, lines: 1, role: "header")
        var y = 8 + 12.0
        let headerY = y
        y += Android.header.lineHeight + 2
        let textTop = y
        let title = content.title.flatMap { $0.isEmpty ? nil : $0 }.map {
            block($0, Android.title, width: textWidth, lines: limits.titleLines, role: "title")
        }
        if let title { y += title.height }
        var bodyText = Self.platformCut(content.body ?? "", utf16: limits.bodyUTF16, characters: limits.bodyCharacters, what: "body", notes: &notes)
        if limits.singleLineBody { bodyText = bodyText.replacingOccurrences(of: "\r\n", with: " ").replacingOccurrences(of: "\n", with: " ") }
        let bodyTop = y
        let body = bodyText.isEmpty ? nil : block(bodyText, Android.body, width: textWidth, lines: limits.bodyLines, role: "body")
        if let body { y += body.height }
        if icon != nil { y = max(y, textTop + Android.largeIcon) }

        var pictureRect: Rect?
        var picture: LoadedPicture?
        if showsPicture, let url = content.imageURL {
            y += 10
            let rect = Rect(x: left, y: y, width: contentWidth, height: contentWidth / Android.pictureAspect)
            pictureRect = rect
            picture = loadPicture(url, notes: &notes)
            y = rect.maxY
        }
        let actions = expanded ? content.actions.prefix(3).map { block($0, Android.action, width: 110, lines: 1, role: "action") } : []
        let actionsY = y + 8
        if !actions.isEmpty { y = actionsY + 40 }
        y += 14
        let cardRect = Rect(x: card.x, y: 8, width: card.width, height: y - 8)

        var texts = [header.lines]
        if let title { texts.append(title.lines) }
        if let body { texts.append(body.lines) }
        texts.append(contentsOf: actions.map(\.lines))
        let appName = configuration.appName
        return Scene(
            width: Android.canvasWidth, height: cardRect.maxY + 8, background: Color(hex: 0xDADCE0), texts: texts,
            notes: notes
        ) { canvas in
            canvas.shadow(cardRect, radius: card.radius)
            canvas.fill(cardRect, radius: card.radius, color: Color(hex: 0xFFFFFF))
            // Small icon: the app's monochrome mark in its accent colour.
            let badge = Rect(x: left, y: headerY, width: 18, height: 18)
            canvas.fill(badge, radius: 9, color: Android.accent)
            let mark = self.block(String(appName.prefix(1)), TextStyle(families: Android.families, weight: .bold, size: 11, lineHeight: 18, color: Color(hex: 0xFFFFFF), alignment: PANGO_ALIGN_CENTER), width: 18, lines: 1, role: "mark")
            mark.draw(on: canvas, x: badge.x, y: badge.y)
            header.draw(on: canvas, x: left + 24, y: headerY)
            canvas.chevron(x: cardRect.maxX - card.padding - 8, y: headerY + 9, size: 10, up: expanded, color: Color(hex: 0x5F6368))
            title?.draw(on: canvas, x: left, y: textTop)
            body?.draw(on: canvas, x: left, y: bodyTop)
            if let (url, bitmap, problem) = icon {
                let rect = Rect(x: cardRect.maxX - card.padding - Android.largeIcon, y: textTop, width: Android.largeIcon, height: Android.largeIcon)
                self.drawPicture(url, bitmap, problem: problem, on: canvas, in: rect, radius: 8, cover: true)
            }
            if let rect = pictureRect, let (url, bitmap, problem) = picture {
                self.drawPicture(url, bitmap, problem: problem, on: canvas, in: rect, radius: 12, cover: true)
            }
            var x = left
            for action in actions {
                action.draw(on: canvas, x: x, y: actionsY + 10)
                x += action.inkWidth + 24
            }
        }
    }
}
