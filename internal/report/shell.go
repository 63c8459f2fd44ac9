package report

import "html/template"

// shell is what every HTML page of lab's shares (a run's or a comparison's
// report, a bisect's, the history's): the page, its base style, and the
// script that counts the charts the browser laid out, which lab's browser
// test reads. A page fills in "title", "style" (its own rules) and "body".
const shell = `{{define "shell"}}<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{template "title" .}}</title>
<style>
body { font-family: sans-serif; margin: 2em; max-width: 90em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 90%; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; }
td.n { text-align: right; font-family: monospace; }
p.headline { font-size: 110%; }
figure { margin: 1em 0; }
code { font-size: 85%; word-break: break-all; }
{{template "style" .}}
</style></head><body>
{{template "body" .}}
<script>
// Marks how many charts the browser actually laid out, for lab's test.
window.addEventListener("load", function () {
  var n = 0;
  document.querySelectorAll("figure.chart svg").forEach(function (s) {
    var b = s.getBBox();
    if (b.width > 0 && b.height > 0 && s.querySelectorAll("path").length > 0) n++;
  });
  document.body.setAttribute("data-charts-rendered", n);
});
</script>
</body></html>
{{end}}`

// NewPage is an HTML page of lab's: text defines its "title", "style" and
// "body" templates (and any it calls), laid out in the shell every page
// shares. Execute it with ExecuteTemplate(w, "shell", data).
func NewPage(name, text string, funcs template.FuncMap) *template.Template {
	return template.Must(template.Must(template.New(name).Funcs(funcs).Parse(shell)).Parse(text))
}
