// A slide deck made by pptxgenjs (a real PowerPoint writer, from npm):
// node make_pptx.cjs OUT. Slide titles, body text and speaker notes are
// what spec/document_spec.lua reads back.
const PptxGenJS = require("pptxgenjs");
const out = process.argv[2];
const pres = new PptxGenJS();
pres.defineSlideMaster({
  title: "TITLED",
  objects: [{ placeholder: { options: { name: "title", type: "title", x: 0.5, y: 0.3, w: 9, h: 1 }, text: "" } }],
  slideNumber: { x: 0.3, y: "90%" },
});
const s1 = pres.addSlide({ masterName: "TITLED" });
s1.addText("Roadmap 2027", { placeholder: "title", x: 0.5, y: 0.3, w: 9, h: 1 });
s1.addText("First point\nSecond point", { x: 0.5, y: 1.5, w: 9, h: 2 });
s1.addNotes("Say hello first.");
const s2 = pres.addSlide();
s2.addText("Only body text, ünïcode", { x: 1, y: 1, w: 8, h: 1 });
s2.addTable([[{ text: "cell A" }, { text: "cell B" }]], { x: 1, y: 3, w: 8 });
pres.writeFile({ fileName: out }).then(() => {}, (e) => { console.error(e); process.exit(1); });
