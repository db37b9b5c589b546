export interface User {
  id: number;
  name: string;
  email?: string;
  roles: Role[];
}

export type Role = 'admin' | 'editor' | 'viewer';

export function displayName(user: User): string {
  return user.name.trim() || `user-${user.id}`;
}

export function isAdmin(user: User): boolean {
  return user.roles.includes('admin');
}
