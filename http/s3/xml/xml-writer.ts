/** @module A minimal XML writer for the large S3 listings. xmlbuilder2 builds a DOM first, which
 * made one ListObjectsV2 page of 1000 keys take longer than the 25 ms p99 a page may take; this
 * writer appends escaped strings, an order of magnitude faster. The other, small documents are
 * still built with xmlbuilder2. Text is escaped as
 * xmlbuilder2 plus s3-xml's post-processing do: `&`, `<`, `>` as entities, and characters XML 1.0
 * cannot carry literally (C0 controls but tab and newline, CR, U+FFFE, U+FFFF) as references. */

const NEEDS_ESCAPE = /[&<>\u0000-\u0008\u000B-\u001F\uFFFE\uFFFF]/
const ESCAPED = /[&<>\u0000-\u0008\u000B-\u001F\uFFFE\uFFFF]/g

function escapeCharacter(character: string): string {
  if (character === '&') return '&amp;'
  if (character === '<') return '&lt;'
  if (character === '>') return '&gt;'
  return `&#x${character.charCodeAt(0).toString(16).toUpperCase()};`
}

export function escapeXmlText(value: string): string {
  return NEEDS_ESCAPE.test(value) ? value.replace(ESCAPED, escapeCharacter) : value
}

/** Appends to one string: V8 joins the pieces once, when the page is written out, which costs
 * less than pushing them to an array and joining it. */
export class XmlWriter {
  private xml = '<?xml version="1.0" encoding="UTF-8"?>'

  /** Opens an element; names are ours (never client data), so they need no escaping. */
  open(name: string, namespace?: string): this {
    this.xml += namespace === undefined ? `<${name}>` : `<${name} xmlns="${namespace}">`
    return this
  }

  close(name: string): this {
    this.xml += `</${name}>`
    return this
  }

  /** A whole element holding text. */
  text(name: string, value: string | number | boolean): this {
    this.xml += `<${name}>${escapeXmlText(String(value))}</${name}>`
    return this
  }

  end(): string {
    return this.xml
  }
}
