/** The hand-written baseline splitter: string buffer, indexOf, JSON.parse per line. */
export function lineSplitter(onValue) {
  let pending = '';
  return (chunk) => {
    const text = pending + chunk;
    let start = 0;
    let nl;
    while ((nl = text.indexOf('\n', start)) !== -1) {
      if (nl > start) onValue(JSON.parse(text.slice(start, nl)));
      start = nl + 1;
    }
    pending = text.slice(start);
  };
}
