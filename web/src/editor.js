// The code editor: CodeMirror 6 with Python highlighting.
import { EditorView, basicSetup } from "codemirror";
import { python } from "@codemirror/lang-python";

export function createEditor(parent, doc) {
  return new EditorView({ doc, parent, extensions: [basicSetup, python()] });
}

export function editorText(view) {
  return view.state.doc.toString();
}
