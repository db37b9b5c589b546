import { label, missing } from './a';
const n: number = label({ id: 1, name: 'x' });
