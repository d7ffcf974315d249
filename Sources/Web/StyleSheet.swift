extension Asset {
    /// Both pages' look: one column on a phone, two on a desk; large touch
    /// targets; focus always visible.
    static let styleSheet = Asset(name: "style.css", contentType: "text/css; charset=utf-8", text: #"""
        :root { --ink: #1d2430; --muted: #5b6472; --line: #d5dae1; --bg: #f4f6f8; --card: #fff; --accent: #1f5fbf; --danger: #b42318; --ok: #067647; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 16px/1.5 system-ui, "Noto Sans KR", "Apple SD Gothic Neo", sans-serif; color: var(--ink); background: var(--bg); }
        h1 { font-size: 1.25rem; margin: 0; }
        h2 { font-size: 1.1rem; margin: 0 0 .75rem; }
        h3 { font-size: 1rem; margin: 1rem 0 .5rem; }
        .bar { display: flex; flex-wrap: wrap; align-items: center; gap: .25rem .75rem; padding: .5rem 1rem; background: var(--card); border-bottom: 1px solid var(--line); }
        .bar .who { margin: 0; color: var(--muted); flex: 1 1 12rem; font-size: .9rem; word-break: keep-all; }
        body { word-break: keep-all; overflow-wrap: break-word; }
        .bar form { margin: 0; }
        main { padding: 1rem; display: grid; gap: 1rem; max-width: 72rem; margin: 0 auto; }
        main.narrow { max-width: 26rem; padding-top: 3rem; }
        @media (min-width: 56rem) { main.columns { grid-template-columns: 1fr 1fr; align-items: start; } }
        .card { background: var(--card); border: 1px solid var(--line); border-radius: .5rem; padding: 1rem; }
        label, legend { display: block; font-weight: 600; margin: .5rem 0 .25rem; }
        fieldset { border: 0; padding: 0; margin: 0; }
        input, select, textarea, button { font: inherit; }
        input[type=password], input[type=text], input[type=email], select, textarea { width: 100%; padding: .6rem; border: 1px solid #6b7280; border-radius: .375rem; background: #fff; }
        textarea { min-height: 4.5rem; resize: vertical; }
        .seat { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: .5rem; }
        main > * { min-width: 0; }
        .choices { display: flex; flex-wrap: wrap; gap: .5rem; }
        .choices label { font-weight: 400; margin: 0; display: flex; align-items: center; gap: .4rem; min-height: 2.75rem; padding: .4rem .9rem; border: 1px solid #6b7280; border-radius: 2rem; background: #fff; cursor: pointer; white-space: nowrap; }
        .choices input { width: 1.1rem; height: 1.1rem; margin: 0; }
        button { min-height: 2.75rem; min-width: 2.75rem; white-space: nowrap; padding: .5rem 1rem; border: 0; border-radius: .375rem; background: var(--accent); color: #fff; font-weight: 600; cursor: pointer; }
        button.secondary { background: #e7ebf0; color: var(--ink); border: 1px solid #6b7280; }
        button.danger { background: #fde8e7; color: var(--danger); border: 1px solid var(--danger); }
        button.link { background: none; color: var(--accent); padding: .25rem 0; text-align: left; font-weight: 600; text-decoration: underline; white-space: normal; }
        button:disabled, button[aria-disabled=true] { opacity: .55; cursor: default; }
        :focus-visible { outline: 3px solid #1d2430; outline-offset: 2px; }
        [tabindex="-1"]:focus { outline: 3px solid #1d2430; outline-offset: 2px; }
        .actions { display: flex; gap: .5rem; margin-top: 1rem; align-items: center; flex-wrap: wrap; }
        .error { color: var(--danger); margin: .25rem 0 0; min-height: 1.25rem; }
        .error:empty { min-height: 0; }
        .status { margin: .5rem 0 0; min-height: 1.5rem; }
        main.gate > .status:empty { min-height: 0; margin: 0; }
        .status.ok { color: var(--ok); }
        .status.warn { color: #b54708; }
        .student { display: flex; align-items: center; gap: .75rem; margin-top: .75rem; min-height: 4.5rem; }
        .avatar { width: 4rem; height: 4rem; border-radius: 50%; display: grid; place-items: center; background: #dbe7fb; color: var(--accent); font-weight: 700; font-size: 1.2rem; object-fit: cover; flex: none; }
        .student .name { font-size: 1.3rem; font-weight: 700; }
        ul.plain { list-style: none; margin: 0; padding: 0; }
        ul.plain li { display: flex; gap: .75rem; align-items: center; justify-content: space-between; padding: .6rem 0; border-top: 1px solid var(--line); }
        ul.plain li > button { flex: none; }
        ul.plain li:first-child { border-top: 0; }
        .meta { color: var(--muted); font-size: .9rem; }
        .badge { display: inline-block; padding: 0 .5rem; border-radius: 1rem; background: var(--accent); color: #fff; font-size: .8rem; font-weight: 700; }
        .unread > div > button.link::after { content: " ●"; color: var(--accent); text-decoration: none; }
        table { width: 100%; border-collapse: collapse; }
        th, td { text-align: left; padding: .45rem .35rem; border-top: 1px solid var(--line); vertical-align: top; white-space: nowrap; }
        th { font-size: .85rem; color: var(--muted); font-weight: 600; }
        td.detail { white-space: normal; overflow-wrap: anywhere; width: 100%; }
        ul.entries { list-style: none; margin: 0; padding: 0; }
        li.entry { display: flex; gap: .6rem; align-items: flex-start; padding: .5rem 0; border-top: 1px solid var(--line); }
        li.entry:first-child { border-top: 0; }
        .thumb { width: 2.75rem; height: 2.75rem; border-radius: 50%; flex: none; object-fit: cover; background: #dbe7fb; color: var(--accent); display: grid; place-items: center; font-weight: 700; }
        .entry-text { flex: 1; min-width: 0; }
        .entry-text p { margin: 0; }
        .entry-head { display: flex; justify-content: space-between; gap: .5rem; align-items: baseline; }
        .entry-seat, .entry-head .time, .often { color: var(--muted); font-size: .9rem; }
        .entry-head .time { flex: none; }
        .entry-reason { display: flex; flex-wrap: wrap; gap: 0 .6rem; align-items: baseline; }
        .entry .detail { font-size: .9rem; color: var(--ink); background: var(--bg); border-radius: .25rem; padding: .15rem .4rem; margin-top: .2rem; white-space: pre-wrap; }
        .tag { font-size: .8rem; font-weight: 700; color: var(--danger); border: 1px solid var(--danger); border-radius: .25rem; padding: 0 .3rem; }
        li.entry.removed .who strong, li.entry.removed .reason { text-decoration: line-through; }
        .entry-head .left { flex: none; font-weight: 700; }
        li.entry.owing .left { color: var(--danger); }
        .entry-text p.service-line { display: flex; justify-content: space-between; align-items: center; gap: .5rem; margin-top: .15rem; }
        ul.services { list-style: none; padding: 0; margin: .2rem 0 0; font-size: .9rem; }
        ul.services li { display: flex; justify-content: space-between; align-items: center; gap: .5rem; padding: .1rem 0; }
        h3.group { display: flex; gap: .5rem; align-items: baseline; border-bottom: 2px solid var(--line); padding-bottom: .25rem; }
        h3.section { color: var(--accent); }
        input[type=search] { width: 100%; min-height: 2.75rem; padding: .5rem .6rem; border: 1px solid #6b7280; border-radius: .375rem; background: #fff; margin-bottom: .5rem; }
        #today-title .meta { font-weight: 400; }
        main.gate { max-width: 40rem; gap: .75rem; padding: .75rem; }
        .banner { margin: 0; padding: .75rem 1rem; background: #fef0c7; color: #7a2e0e; font-weight: 600; border-bottom: 1px solid #b54708; }
        .crumbs { display: flex; align-items: center; gap: .75rem; min-height: 2.75rem; margin-bottom: .5rem; }
        .crumbs p { margin: 0; }
        .grid { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: .5rem; margin-top: .5rem; }
        .grid.class { grid-template-columns: repeat(4, minmax(0, 1fr)); }
        .grid.number { grid-template-columns: repeat(5, minmax(0, 1fr)); }
        .grid.reasons { grid-template-columns: repeat(2, minmax(0, 1fr)); }
        .grid button { min-height: 3.25rem; padding: .5rem .25rem; font-size: 1.15rem; background: #fff; color: var(--ink); border: 1px solid #6b7280; }
        .grid button[aria-pressed=true] { background: var(--accent); color: #fff; border-color: var(--accent); }
        fieldset legend { font-weight: 600; margin: .75rem 0 0; }
        .face { display: flex; flex-direction: column; align-items: center; gap: .5rem; }
        .portrait { width: min(62vw, 16rem); aspect-ratio: 3 / 4; border-radius: .5rem; background: #e7ebf0; border: 1px solid #6b7280; display: grid; place-items: center; overflow: hidden; }
        .portrait img { width: 100%; height: 100%; object-fit: cover; image-rendering: auto; }
        .photo-state { margin: 0; padding: .5rem; color: var(--muted); text-align: center; font-weight: 600; }
        .big-name { font-size: 2rem; margin: 0; text-align: center; }
        button.wide { width: 100%; min-height: 3.25rem; font-size: 1.15rem; margin-top: .75rem; }
        li.pending { background: #fffbeb; }
        .state { color: #93370d; font-size: .9rem; font-weight: 600; }
        .notice { margin: 0; padding: .75rem 1rem; border-radius: .5rem; background: #e8f0fd; }
        .code { font: 700 2rem/1.3 ui-monospace, "DejaVu Sans Mono", monospace; letter-spacing: .12em; margin: .5rem 0; }
        .bar a.devices { display: inline-flex; align-items: center; min-height: 2.75rem; color: var(--accent); font-weight: 600; }
        details > summary { cursor: pointer; font-weight: 600; min-height: 2.75rem; display: flex; align-items: center; }
        [hidden] { display: none !important; }
        """#)
}
