"""The leaderboard pages' one stylesheet, inlined in every page (no outside resource)."""

__all__ = ["CSS"]

CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:1.5rem auto;max-width:70rem;padding:0 1rem;
color:#1b1b1b;background:#fff}
h1{font-size:1.5rem;margin:.2rem 0 .8rem}h2{font-size:1.15rem;margin:1.6rem 0 .5rem}
a{color:#0645ad}nav{margin-bottom:.8rem;font-size:.9rem}
table{border-collapse:collapse;width:100%;margin:.4rem 0 1rem;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}#overview{width:auto;min-width:40%}td.num,th.num{text-align:right}
th a.sort{text-decoration:none}th[aria-sort] a.sort{font-weight:700}
.ci{color:#555;font-size:.85em}.muted{color:#666}.badge{font-size:.8em;padding:0 .3em;
border:1px solid #999;border-radius:3px}
.verified{border-color:#2a7;color:#185}.baseline{border-color:#57a;color:#246}
svg.plot{max-width:100%;height:auto;background:#fff}
svg .frame{fill:none;stroke:#888}svg .grid{stroke:#eee}svg .tick,svg .xlabel{font-size:11px;
fill:#444}svg .axis-label{font-size:12px;fill:#222}svg .point{fill:#1f5fbf}
svg .interval,svg .cap{stroke:#1f5fbf;stroke-width:1.5}svg .empty{fill:#888}
.turn{border:1px solid #ddd;border-radius:4px;margin:.6rem 0;padding:.4rem .6rem;
break-inside:avoid}
.turn h3{font-size:1rem;margin:.1rem 0 .3rem}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;padding:.4rem;margin:.2rem 0;
max-height:30rem;overflow:auto}
pre.reply{background:#eef4ff}.reward{font-weight:600}.note{background:#fff6e0;padding:.4rem}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem}dl.meta dt{color:#555}
@media print{nav,a.sort::after{display:none}pre{max-height:none;overflow:visible}
body{max-width:none}a{color:inherit;text-decoration:none}}
"""
